CREATE TABLE `api_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text,
	`key_digest` text NOT NULL,
	`key_prefix` text NOT NULL,
	`client_secret_digest` text,
	`owner_id` text,
	`description` text,
	`created_date` text NOT NULL,
	`expire_date` text,
	`revoked` integer DEFAULT false NOT NULL,
	`permissions` integer DEFAULT 15 NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`owner_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_digest` ON `api_keys` (`key_digest`);--> statement-breakpoint
CREATE INDEX `api_keys_owner` ON `api_keys` (`owner_id`);--> statement-breakpoint
CREATE TABLE `artifact_chunks` (
	`download_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`data` blob NOT NULL,
	PRIMARY KEY(`download_id`, `seq`),
	FOREIGN KEY (`download_id`) REFERENCES `release_downloads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `assemblies` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`version` text,
	`culture` text,
	`public_key_token` text,
	`mapping_file_id` integer,
	`debug_symbols_key` text,
	`description` text,
	`release_id` integer,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`mapping_file_id`) REFERENCES `resources`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`release_id`) REFERENCES `product_releases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `assemblies_release` ON `assemblies` (`release_id`);--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`customer_id` integer NOT NULL,
	`title` text,
	`first_name` text,
	`last_name` text NOT NULL,
	`email` text,
	`phone` text,
	`mobile` text,
	`fax` text,
	`details` text,
	`notify` integer DEFAULT false NOT NULL,
	`meta` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contacts_customer` ON `contacts` (`customer_id`);--> statement-breakpoint
CREATE TABLE `customers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`code` text NOT NULL,
	`title` text,
	`first_name` text,
	`last_name` text,
	`company` text,
	`email` text,
	`phone` text,
	`mobile` text,
	`fax` text,
	`website` text,
	`address` text,
	`postal_code` text,
	`city` text,
	`region` text,
	`country` text,
	`country_code` text,
	`vat_code` text,
	`is_reseller` integer DEFAULT false NOT NULL,
	`rating` integer,
	`notes` text,
	`meta` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `customers_code` ON `customers` (`code`);--> statement-breakpoint
CREATE INDEX `customers_email` ON `customers` (`email`);--> statement-breakpoint
CREATE TABLE `download_tokens` (
	`token_digest` text PRIMARY KEY NOT NULL,
	`download_id` integer NOT NULL,
	`license_id` integer,
	`expires_at` text NOT NULL,
	`used_at` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`download_id`) REFERENCES `release_downloads`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `download_tokens_expires` ON `download_tokens` (`expires_at`);--> statement-breakpoint
CREATE TABLE `email_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`to_address` text NOT NULL,
	`subject` text NOT NULL,
	`body` text NOT NULL,
	`is_html` integer DEFAULT false NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`created_at` text NOT NULL,
	`sent_at` text
);
--> statement-breakpoint
CREATE TABLE `license_templates` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`code` text,
	`product_id` integer NOT NULL,
	`release_id` integer,
	`license_type` integer,
	`edition` text,
	`licensing_mode` integer,
	`max_clients` integer,
	`expire_days` integer,
	`support_days` integer,
	`features` text,
	`description` text,
	`meta` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`release_id`) REFERENCES `product_releases`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `license_templates_product` ON `license_templates` (`product_id`);--> statement-breakpoint
CREATE INDEX `license_templates_release` ON `license_templates` (`release_id`);--> statement-breakpoint
CREATE TABLE `license_tokens` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`token_digest` text NOT NULL,
	`token_prefix` text NOT NULL,
	`kind` integer NOT NULL,
	`license_id` integer NOT NULL,
	`machine_id` text,
	`client_id` text,
	`client_name` text,
	`address` text,
	`issue_date` text NOT NULL,
	`expire_date` text,
	`last_heartbeat` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `license_tokens_digest` ON `license_tokens` (`token_digest`);--> statement-breakpoint
CREATE INDEX `license_tokens_license` ON `license_tokens` (`license_id`,`machine_id`,`client_id`);--> statement-breakpoint
CREATE TABLE `license_traces` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`license_id` integer,
	`action` integer NOT NULL,
	`client_ip` text,
	`client_id` text,
	`client_name` text,
	`machine_id` text,
	`geo_location` text,
	`meta` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `license_traces_license` ON `license_traces` (`license_id`);--> statement-breakpoint
CREATE INDEX `license_traces_created` ON `license_traces` (`created_at`);--> statement-breakpoint
CREATE TABLE `licenses` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`license_id` text NOT NULL,
	`user_key` text NOT NULL,
	`product_id` integer NOT NULL,
	`customer_id` integer,
	`order_id` integer,
	`template_id` integer,
	`license_type` integer DEFAULT 0 NOT NULL,
	`edition` text,
	`licensing_mode` integer DEFAULT 0 NOT NULL,
	`max_clients` integer DEFAULT 0 NOT NULL,
	`issue_date` text NOT NULL,
	`expire_date` text,
	`support_expire_date` text,
	`revoked` integer DEFAULT false NOT NULL,
	`features` text,
	`licensee_name` text,
	`licensee_email` text,
	`licensee_company` text,
	`description` text,
	`trace` integer DEFAULT true NOT NULL,
	`meta` text,
	`integrity` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`order_id`) REFERENCES `orders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`template_id`) REFERENCES `license_templates`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `licenses_license_id` ON `licenses` (`license_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `licenses_user_key` ON `licenses` (`user_key`);--> statement-breakpoint
CREATE INDEX `licenses_product` ON `licenses` (`product_id`);--> statement-breakpoint
CREATE INDEX `licenses_customer` ON `licenses` (`customer_id`);--> statement-breakpoint
CREATE INDEX `licenses_order` ON `licenses` (`order_id`);--> statement-breakpoint
CREATE INDEX `licenses_template` ON `licenses` (`template_id`);--> statement-breakpoint
CREATE TABLE `logs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`timestamp` text NOT NULL,
	`level` integer NOT NULL,
	`message` text NOT NULL,
	`exception` text,
	`properties` text,
	`request_id` text
);
--> statement-breakpoint
CREATE INDEX `logs_timestamp` ON `logs` (`timestamp`);--> statement-breakpoint
CREATE INDEX `logs_level` ON `logs` (`level`);--> statement-breakpoint
CREATE TABLE `order_products` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`order_id` integer NOT NULL,
	`product_id` integer NOT NULL,
	`quantity` integer DEFAULT 1 NOT NULL,
	`unit_price` real,
	`discount` real,
	`taxes` real,
	`description` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`order_id`) REFERENCES `orders`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `order_products_order_product` ON `order_products` (`order_id`,`product_id`);--> statement-breakpoint
CREATE INDEX `order_products_product` ON `order_products` (`product_id`);--> statement-breakpoint
CREATE TABLE `orders` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`order_number` text NOT NULL,
	`customer_id` integer NOT NULL,
	`reseller_id` integer,
	`status` integer DEFAULT 0 NOT NULL,
	`payment_status` integer DEFAULT 0 NOT NULL,
	`total` real,
	`currency` text,
	`purchase_order` text,
	`invoice_number` text,
	`payment_type` text,
	`payment_number` text,
	`payment_date` text,
	`description` text,
	`meta` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`customer_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`reseller_id`) REFERENCES `customers`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `orders_order_number` ON `orders` (`order_number`);--> statement-breakpoint
CREATE INDEX `orders_customer` ON `orders` (`customer_id`);--> statement-breakpoint
CREATE TABLE `product_releases` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`product_id` integer NOT NULL,
	`version` text NOT NULL,
	`name` text,
	`description` text,
	`release_notes` text,
	`release_date` text,
	`channel` text DEFAULT 'stable' NOT NULL,
	`public` integer DEFAULT false NOT NULL,
	`requires_maintenance` integer DEFAULT true NOT NULL,
	`staging_percentage` integer,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `product_releases_version` ON `product_releases` (`product_id`,`version`);--> statement-breakpoint
CREATE INDEX `product_releases_channel` ON `product_releases` (`product_id`,`channel`);--> statement-breakpoint
CREATE TABLE `products` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`code` text NOT NULL,
	`name` text NOT NULL,
	`description` text,
	`url` text,
	`copyright` text,
	`is_application` integer DEFAULT false NOT NULL,
	`purchase_url` text,
	`renewal_url` text,
	`support_email` text,
	`maintenance_notice_days` integer DEFAULT 30 NOT NULL,
	`price` real,
	`currency` text,
	`meta` text,
	`release_generation` integer DEFAULT 0 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `products_code` ON `products` (`code`);--> statement-breakpoint
CREATE TABLE `release_downloads` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`release_id` integer NOT NULL,
	`platform` text NOT NULL,
	`kind` text NOT NULL,
	`file_name` text NOT NULL,
	`source_kind` text NOT NULL,
	`url` text,
	`storage_key` text,
	`size` integer NOT NULL,
	`sha256` text NOT NULL,
	`sha512` text NOT NULL,
	`signature` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`release_id`) REFERENCES `product_releases`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `release_downloads_platform_kind` ON `release_downloads` (`release_id`,`platform`,`kind`);--> statement-breakpoint
CREATE TABLE `reports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`uid` text,
	`name` text NOT NULL,
	`version` text,
	`date` text,
	`license_id` integer,
	`machine_id` text,
	`client_id` text,
	`client_name` text,
	`content_type` text,
	`content` text,
	`content_key` text,
	`address` text,
	`geo_location` text,
	`properties` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `reports_license` ON `reports` (`license_id`);--> statement-breakpoint
CREATE INDEX `reports_created` ON `reports` (`created_at`);--> statement-breakpoint
CREATE TABLE `resources` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`type` text,
	`code` text,
	`description` text,
	`source` text,
	`password` text,
	`data` text,
	`data_format` text,
	`meta` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `resources_type` ON `resources` (`type`);--> statement-breakpoint
CREATE INDEX `resources_code` ON `resources` (`code`);--> statement-breakpoint
CREATE TABLE `revoked_tokens` (
	`jti` text PRIMARY KEY NOT NULL,
	`expires_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `settings` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`category` text,
	`group_name` text,
	`name` text NOT NULL,
	`value` text,
	`type` text,
	`read_only` integer DEFAULT false NOT NULL,
	`description` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `settings_name` ON `settings` (`name`);--> statement-breakpoint
CREATE TABLE `user_settings` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`user_id` text NOT NULL,
	`category` text,
	`group_name` text,
	`name` text NOT NULL,
	`value` text,
	`type` text,
	`description` text,
	`read_only` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `user_settings_user` ON `user_settings` (`user_id`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`user_name` text NOT NULL,
	`normalized_user_name` text NOT NULL,
	`email` text,
	`phone_number` text,
	`title` text,
	`first_name` text,
	`last_name` text,
	`department` text,
	`image` text,
	`address` text,
	`postal_code` text,
	`region` text,
	`city` text,
	`country` text,
	`country_code` text,
	`mobile` text,
	`notes` text,
	`birth_date` text,
	`rank` integer,
	`customer_id` integer,
	`roles` text DEFAULT '[]' NOT NULL,
	`password_hash` text,
	`last_dismiss_messages` text,
	`last_log_in` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_normalized_user_name` ON `users` (`normalized_user_name`);--> statement-breakpoint
CREATE INDEX `users_email` ON `users` (`email`);--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`webhook_subscription_id` integer NOT NULL,
	`event_id` text NOT NULL,
	`event_type` text NOT NULL,
	`payload` text NOT NULL,
	`status_code` integer,
	`response` text,
	`error_message` text,
	`is_success` integer DEFAULT false NOT NULL,
	`retry_count` integer DEFAULT 0 NOT NULL,
	`sent_at` text,
	`next_retry_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`webhook_subscription_id`) REFERENCES `webhook_subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_events_event_subscription` ON `webhook_events` (`event_id`,`webhook_subscription_id`);--> statement-breakpoint
CREATE INDEX `webhook_events_subscription` ON `webhook_events` (`webhook_subscription_id`);--> statement-breakpoint
CREATE INDEX `webhook_events_created` ON `webhook_events` (`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_subscriptions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`event_types` text NOT NULL,
	`secret_encrypted` text NOT NULL,
	`headers` text,
	`is_active` integer DEFAULT true NOT NULL,
	`max_retry_count` integer DEFAULT 8 NOT NULL,
	`description` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
